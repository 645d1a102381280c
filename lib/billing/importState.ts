/**
 * What one FOCUS import learns from its rows, batch by batch: the COPY text of the valid rows,
 * the rejected rows, and what is written after the COPY (the periods it replaces, the accounts
 * and commitments it discovers).
 */
import type { Provider } from "./sql.ts";
import type { CsvBatch } from "./csvReader.ts";
import { detach } from "./csvReader.ts";
import { encodeFocusRow, type EncodedRow, type Layout } from "./focusRow.ts";

export interface ImportPeriod {
  provider: Provider;
  billing_account_id: string;
  month: string;
}

export interface DiscoveredAccount {
  provider: Provider;
  account_id: string;
  name: string | null;
  billing_account_id: string | null;
  billing_account_name: string | null;
}

export interface BatchReject {
  /** 1-based line of the CSV file where the record starts. */
  line: number;
  errors: string[];
  record: Record<string, string>;
}

export interface BatchOutcome {
  /** COPY text lines of the batch's valid rows, without line ends. */
  lines: string[];
  rowsRead: number;
  imported: number;
  rejects: BatchReject[];
}

/** Commitment ids remembered for the inventory step (beyond this, the rest are skipped). */
const MAX_COMMITMENT_IDS = 100_000;

export class FocusImportState {
  private readonly periods = new Map<string, ImportPeriod>();
  private readonly closedPeriods = new Set<string>();
  /** (provider, month) → every row so far carries an InvoiceId (files with that column only). */
  private readonly invoicedPeriods = new Map<string, boolean>();
  private readonly accounts = new Map<string, DiscoveredAccount>();
  private readonly commitmentIds = new Set<string>();
  private rejected = 0;
  /** The previous valid row. */
  private last: EncodedRow | null = null;

  constructor(private readonly header: string[], private readonly layout: Layout) {}

  /**
   * Validates and encodes the records of one batch from record `from`. Without `skipInvalid`,
   * once a row was rejected nothing will be kept: rows are then only validated.
   */
  addBatch(batch: CsvBatch, from: number, skipInvalid: boolean): BatchOutcome {
    const { records, lines, plain } = batch;
    const header = this.header;
    const out: string[] = [];
    const rejects: BatchReject[] = [];
    let imported = 0;
    for (let r = from; r < records.length; r++) {
      const fields = records[r]!;
      const m = fields.length !== header.length ? { errors: [`has ${fields.length} fields, the header has ${header.length}`] } : encodeFocusRow(fields, this.layout, plain);
      if ("errors" in m) {
        const record: Record<string, string> = {};
        for (let i = 0; i < header.length; i++) record[header[i]!] = fields[i] ?? "";
        rejects.push({ line: lines[r]!, errors: m.errors, record });
        this.rejected++;
        continue;
      }
      // Consecutive rows nearly always share the period and often the account: no key built then.
      const last = this.last;
      if (!last || last.provider !== m.provider || last.month !== m.month || last.billingAccountId !== m.billingAccountId) {
        const pkey = `${m.provider}\u0000${m.billingAccountId}\u0000${m.month}`;
        if (!this.periods.has(pkey)) this.periods.set(detach(pkey), { provider: m.provider, billing_account_id: detach(m.billingAccountId), month: m.month });
      }
      if (m.billingPeriodClosed && !(last?.billingPeriodClosed && last.provider === m.provider && last.month === m.month)) this.closedPeriods.add(`${m.provider}\u0000${m.month}`);
      // Within a run of rows of one period, only an invoiced row after uninvoiced ones changes nothing; skip the key then too.
      if (m.invoiced !== null && !(last && last.provider === m.provider && last.month === m.month && (m.invoiced || last.invoiced === false))) {
        const ikey = `${m.provider}\u0000${m.month}`;
        const all = this.invoicedPeriods.get(ikey);
        if (all === undefined) this.invoicedPeriods.set(ikey, m.invoiced);
        else if (all && !m.invoiced) this.invoicedPeriods.set(ikey, false);
      }
      if (!last || last.provider !== m.provider || last.accountId !== m.accountId) {
        const akey = `${m.provider}\u0000${m.accountId}`;
        if (!this.accounts.has(akey))
          this.accounts.set(detach(akey), {
            provider: m.provider,
            account_id: detach(m.accountId),
            name: detach(m.accountName),
            billing_account_id: detach(m.billingAccountId),
            billing_account_name: detach(m.billingAccountName),
          });
      }
      this.last = m;
      if (m.commitmentId && this.commitmentIds.size < MAX_COMMITMENT_IDS) {
        const ckey = `${m.provider}\u0000${m.commitmentId}`;
        if (!this.commitmentIds.has(ckey)) this.commitmentIds.add(detach(ckey));
      }
      imported++;
      if (skipInvalid || this.rejected === 0) out.push(m.line);
    }
    return { lines: out, rowsRead: records.length - from, imported, rejects };
  }

  /** The periods, in the order the file first shows them. */
  periodList(): ImportPeriod[] {
    return [...this.periods.values()];
  }

  /** Periods the file closes: rows with BillingPeriodStatus "closed", or an InvoiceId on every row (the provider invoiced the month). */
  closedPeriodList(): { provider: string; month: string }[] {
    const closed = new Set(this.closedPeriods);
    for (const [k, all] of this.invoicedPeriods) if (all) closed.add(k);
    return [...closed].map((k) => {
      const [provider, month] = k.split("\u0000");
      return { provider: provider!, month: month! };
    });
  }

  accountList(): DiscoveredAccount[] {
    return [...this.accounts.values()];
  }

  commitmentList(): { provider: Provider; id: string }[] {
    return [...this.commitmentIds].map((k) => {
      const [provider, id] = k.split("\u0000");
      return { provider: provider as Provider, id: id! };
    });
  }
}
