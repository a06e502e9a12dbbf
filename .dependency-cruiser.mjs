// The shape of the house, checked: no import circles (type-only imports count too: a circle of
// types is still two files that are one concern), and inside a package with rooms, no arrow from a
// lower floor to a higher one. ESLint's import-x/no-cycle skips type-only imports, so it is not
// enough on its own.

/**
 * Each package's rooms, lowest floor first: a room imports only from rooms before it in its list.
 * A path not listed (a package's index, its face) may import any room.
 */
const FLOORS = {
  protocol: [
    '(errors|bytes|backoff)\\.ts$',
    'wire/',
    'keys/',
    'ids/',
    'records/',
    'resume/',
    'tasks/',
    'events/',
  ],
  gateway: [
    'http/',
    'auth/',
    '(gateway-options|gateway-context|gateway-spans|delivery|open-streams|request-producer|request-answers|key-mint|log-deadline|offsets-reader|share-sessions)\\.ts$',
    'tasks/',
    '(session-lane|session-resume|stateless-lane)\\.ts$',
    'gateway\\.ts$',
  ],
  worker: [
    'events/',
    'execution/',
    'worker-options\\.ts$',
    'modules/',
    'calls/',
    'tasks/',
    'stateless/',
    'session/',
    '(worker|worker-lanes)\\.ts$',
  ],
};

const floorRules = Object.entries(FLOORS).flatMap(([pkg, floors]) =>
  floors.flatMap((lower, i) =>
    floors.slice(i + 1).map((higher) => ({
      name: `${pkg}-floors`,
      comment: `${pkg}: a lower room (${lower}) does not import from a higher one (${higher})`,
      severity: 'error',
      from: { path: `^packages/${pkg}/src/${lower}` },
      to: { path: `^packages/${pkg}/src/${higher}` },
    })),
  ),
);

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'Two files that import each other, even only for types, are one concern or a layer reached up.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...floorRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^packages/[^/]+/src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
