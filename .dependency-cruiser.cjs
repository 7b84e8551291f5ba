// Import boundaries (dependency-cruiser). `npm run lint` runs it over src/; scripts/folder-cycles.mjs
// checks the cycles between folders from the same graph. Type-only imports are never counted: they
// vanish at compile time and tie no module's loading to another's.
// How to read a failure: CONTRIBUTING.md ("Guard rails").

// A feature's storage: store.ts, *-store.ts (search-store.ts, links-store.ts, project-store.ts, …).
// blobs/ is the storage layer for bytes itself: its blob-store.ts contract is what others use.
const STORAGE = '^src/[^/]+/(store|[a-z-]*-store)\\.ts$';

const runtime = { dependencyTypesNot: ['type-only'] };

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-runtime-cycle',
      comment: 'Files that import each other at run time (type-only imports excepted) load in an order nobody chose.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: runtime },
    },
    {
      name: 'lower-layers-import-no-feature',
      comment: 'db/, http/ and util/ are below every feature: they import none (pass what they need in instead).',
      severity: 'error',
      from: { path: '^src/(db|http|util)/' },
      to: { path: '^src/[^/]+/', pathNot: '^src/(db|http|util)/', ...runtime },
    },
    {
      name: 'no-other-features-storage',
      comment: "A feature reaches another feature's rows through that feature's service, never its store.",
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: {
        path: STORAGE,
        pathNot: ['^src/$1/', '^src/blobs/'],
        ...runtime,
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/http/compiled/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
