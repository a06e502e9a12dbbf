// The live tail: the console's own SSE endpoint, rendered as a list that grows at the top.
// Plain browser JavaScript, no build step. Text only (textContent): a record's words never become markup.
const base = document.body.dataset.base;
const list = document.getElementById('tail');
const state = document.getElementById('tail-state');
const MAX_ITEMS = 200;

function item(className, parts, href, label) {
  const li = document.createElement('li');
  li.className = className;
  for (const [cls, text] of parts) {
    const span = document.createElement('span');
    span.className = cls;
    span.textContent = text;
    li.append(span, ' ');
  }
  if (href !== undefined) {
    const link = document.createElement('a');
    link.href = href;
    link.textContent = 'open';
    link.setAttribute('aria-label', label);
    li.append(link);
  }
  list.prepend(li);
  while (list.children.length > MAX_ITEMS) list.lastElementChild.remove();
}

const short = (id) => (id.length > 14 ? `${id.slice(0, 12)}…` : id);
const callHref = (session, stream) =>
  `${base}/sessions/${encodeURIComponent(session)}/calls/${encodeURIComponent(stream)}`;

if (list !== null) {
  const source = new EventSource(`${base}/events`);
  source.addEventListener('open', () => {
    state.textContent = 'Live: records appear here as they are written to events.';
  });
  source.addEventListener('error', () => {
    state.textContent = 'Disconnected; reconnecting…';
  });
  source.addEventListener('record', (event) => {
    const r = JSON.parse(event.data);
    item(
      `tail-item kind-${r.kind}`,
      [
        ['mono', short(r.session)],
        ['mono', r.stream],
        ['gen', `attempt ${r.attempt}`],
        ['seq', `#${r.seq}`],
        ['summary', r.summary],
      ],
      callHref(r.session, r.stream),
      `open call ${r.stream} of session ${short(r.session)}`,
    );
  });
  source.addEventListener('skipped', (event) => {
    const { count } = JSON.parse(event.data);
    item('tail-item skipped', [
      ['summary', `${count} records skipped: the page could not keep up`],
    ]);
  });
  source.addEventListener('resume', (event) => {
    const r = JSON.parse(event.data);
    item(`tail-item resume outcome-${r.outcome}`, [
      ['mono', short(r.session)],
      ['outcome', `resume decision: ${r.outcome}`],
      ['summary', r.reason],
    ]);
  });
}
