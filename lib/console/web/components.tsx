/** The console's building blocks: page frame, data loading states, tables, fields. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { ApiError } from "./api.ts";

export interface Async<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  reload: () => void;
}

/** Loads data for a page; reloads when `deps` change; a slower earlier answer never overwrites a newer one. */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: ApiError | Error; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const g = ++generation.current;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => g === generation.current && setState({ data, loading: false }),
      (error) => g === generation.current && setState({ error, loading: false }),
    );
  }, deps);
  useEffect(run, [run]);
  return { data: state.data, error: state.error, loading: state.loading, reload: run };
}

export function Page(props: { title: string; intro?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · commitops`;
  }, [props.title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {props.title}
        </h1>
        {props.actions && <div class="page-actions">{props.actions}</div>}
      </header>
      {props.intro && <p class="intro">{props.intro}</p>}
      {props.children}
    </section>
  );
}

export function Loading(props: { label?: string }) {
  return (
    <p class="loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {props.label ?? "Loading…"}
    </p>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return (
    <div class="empty" role="note">
      {props.children}
    </div>
  );
}

export function ErrorNote(props: { error: unknown; retry?: () => void }) {
  const e = props.error;
  const message = e instanceof ApiError ? e.body.message : e instanceof Error ? e.message : String(e);
  const fields = e instanceof ApiError ? e.body.errors : undefined;
  return (
    <div class="error" role="alert">
      <p>{message}</p>
      {fields && Object.keys(fields).length > 0 && (
        <ul>
          {Object.entries(fields).map(([k, v]) => (
            <li key={k}>
              <strong>{k}</strong>: {v.join("; ")}
            </li>
          ))}
        </ul>
      )}
      {props.retry && (
        <button type="button" class="secondary" onClick={props.retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** Shows loading, error or the content of an Async. */
export function Loaded<T>(props: { state: Async<T>; label?: string; children: (data: T) => ComponentChildren }) {
  const { state } = props;
  if (state.error) return <ErrorNote error={state.error} retry={state.reload} />;
  if (state.data === undefined) return <Loading label={props.label} />;
  return <>{props.children(state.data)}</>;
}

export interface Column<R> {
  key: string;
  label: string;
  numeric?: boolean;
  render?: (row: R) => ComponentChildren;
}

/** A data table: a caption for screen readers, numbers right-aligned, scrollable on narrow screens. */
export function Table<R>(props: { caption: string; columns: Column<R>[]; rows: R[]; rowKey?: (r: R, i: number) => string; footer?: ComponentChildren; id?: string }) {
  return (
    <div class="table-wrap" role="region" aria-label={props.caption} tabIndex={0}>
      <table id={props.id}>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c.key} scope="col" class={c.numeric ? "num" : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r, i) => (
            <tr key={props.rowKey ? props.rowKey(r, i) : i}>
              {props.columns.map((c) => (
                <td key={c.key} class={c.numeric ? "num" : undefined}>
                  {c.render ? c.render(r) : String((r as Record<string, unknown>)[c.key] ?? "—")}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
        {props.footer && <tfoot>{props.footer}</tfoot>}
      </table>
    </div>
  );
}

export function Field(props: { label: string; id: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && (
        <small id={`${props.id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

export function Select(props: { id: string; label: string; value: string; options: { value: string; label: string }[]; onChange: (v: string) => void; hint?: string }) {
  return (
    <Field label={props.label} id={props.id} hint={props.hint}>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange((e.currentTarget as HTMLSelectElement).value)} aria-describedby={props.hint ? `${props.id}-hint` : undefined}>
        {props.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function Badge(props: { tone?: "ok" | "warn" | "bad" | "info"; children: ComponentChildren }) {
  return <span class={`badge ${props.tone ?? "info"}`}>{props.children}</span>;
}

export function Card(props: { title: string; children: ComponentChildren; id?: string; class?: string }) {
  const { title, children, ...rest } = props;
  const hid = `${props.id ?? title.replace(/\W+/g, "-").toLowerCase()}-title`;
  return (
    <section class="card" aria-labelledby={hid} {...rest}>
      <h2 id={hid}>{title}</h2>
      {children}
    </section>
  );
}

/** A headline figure with a link to the rows behind it. */
export function Figure(props: { label: string; value: string; note?: ComponentChildren; href?: string; id?: string }) {
  return (
    <div class="figure" id={props.id}>
      <div class="figure-label">{props.label}</div>
      <div class="figure-value" data-testid={props.id}>
        {props.value}
      </div>
      {props.note && <div class="figure-note">{props.note}</div>}
      {props.href && (
        <a class="figure-link" href={props.href}>
          See the rows behind it<span class="visually-hidden"> ({props.label})</span>
        </a>
      )}
    </div>
  );
}

export interface Pagination {
  page: number;
  page_size: number;
  total_count: number;
  total_pages: number;
}

/** The API's paging (the `X-Pagination` header of every list). */
export function paginationOf(headers: Headers): Pagination | null {
  const raw = headers.get("x-pagination");
  if (!raw) return null;
  try {
    return JSON.parse(raw) as Pagination;
  } catch {
    return null;
  }
}

export function Pager(props: { pagination: Pagination | null; onPage: (page: number) => void; label: string }) {
  const p = props.pagination;
  if (!p || p.total_pages <= 1) return null;
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" class="secondary" disabled={p.page <= 1} onClick={() => props.onPage(p.page - 1)}>
        Previous
      </button>
      <span>
        Page {p.page} of {p.total_pages} ({p.total_count} rows)
      </span>
      <button type="button" class="secondary" disabled={p.page >= p.total_pages} onClick={() => props.onPage(p.page + 1)}>
        Next
      </button>
    </nav>
  );
}

/**
 * A secret the API shows once (a new API key, a webhook signing secret): the value, a copy
 * button, and a button that hides it for good. `id` prefixes the element ids (`<id>`,
 * `<id>-title`, `<id>-value`, `<id>-copy`, `<id>-done`).
 */
export function SecretShownOnce(props: { id: string; title: ComponentChildren; notice: ComponentChildren; value: string; noun: string; onDone: () => void }) {
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied("yes");
    } catch {
      setCopied("no");
    }
  };
  return (
    <section class="secret-box" id={props.id} aria-labelledby={`${props.id}-title`}>
      <h3 id={`${props.id}-title`}>{props.title}</h3>
      <p>{props.notice}</p>
      <p class="secret" id={`${props.id}-value`} aria-label={`The ${props.noun}`}>
        {props.value}
      </p>
      <div class="toolbar">
        <button type="button" id={`${props.id}-copy`} onClick={copy}>
          Copy the {props.noun}
        </button>
        <button type="button" class="secondary" id={`${props.id}-done`} onClick={props.onDone}>
          I have stored it: hide the {props.noun}
        </button>
      </div>
      <p role="status" class="hint">
        {copied === "yes" ? "Copied to the clipboard." : copied === "no" ? `The browser did not allow copying: select the ${props.noun} and copy it.` : ""}
      </p>
    </section>
  );
}
