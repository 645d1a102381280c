// oidc-provider ships no types; the upstream test uses only its constructor and callback().
declare module "oidc-provider" {
  const Provider: new (issuer: string, config: Record<string, unknown>) => { callback(): (req: any, res: any) => void };
  export default Provider;
}
