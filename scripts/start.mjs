// `npm start` will run `tidemark dev`: gateway + worker + the embedded durable log in one process,
// no broker. The CLI lands with issue #6 (see README "Status"); until then this says so plainly.
console.log(
  [
    'Tidemark: the single-process server (`tidemark dev`) is not built yet.',
    'What works today: `npm test` runs the suites against a real Kafka broker.',
    'See README.md, section "Status".',
  ].join('\n'),
);
