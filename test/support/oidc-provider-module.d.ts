// oidc-provider ships no types; the tests use a few calls of it (test/support/oidc-provider.ts).
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}
