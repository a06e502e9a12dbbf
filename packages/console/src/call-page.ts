import { signalAnswerStep, type FoldEffect } from '@tidemark/protocol';
import { isStepOutcome } from '@tidemark/log';
import { html, type Html } from './html.js';
import type { CallDetail, TimelineEntry } from './log-view.js';
import { layout, shortId, time, traceLink, type PageContext } from './pages.js';

// A call's page: its generations, its timeline (every record still in the log, folded as a reader
// folds it, the resets marked) and, for a task, its status history.

export function callPage(ctx: PageContext, call: CallDetail): Html {
  const generations = [...new Set(call.timeline.map((entry) => entry.generation))];
  const colour = (generation: string) => generations.indexOf(generation) % 6;
  const session = call.session;
  return layout(
    ctx,
    call.label,
    html`<nav aria-label="Breadcrumb">
        <a href="${ctx.base}">Overview</a> ›
        <a href="${ctx.base}/sessions/${encodeURIComponent(session.id)}"
          >${session.kind} <span class="mono">${shortId(session.id)}</span></a
        >
        › call
      </nav>
      <h1>${call.label} <span class="mono">${call.stream}</span></h1>
      <dl class="facts">
        <dt>State</dt>
        <dd>${call.finished ? 'finished' : 'running'}</dd>
        <dt>Current generation</dt>
        <dd class="mono">${call.generation} (attempt ${call.attempt}, ${call.cause})</dd>
        <dt>Trace</dt>
        <dd>${traceLink(ctx, call.traceId)}</dd>
      </dl>
      ${call.task === undefined ? '' : taskHistory(ctx, call)}
      ${call.steps.length === 0 ? '' : stepList(ctx, call, generations)}
      <h2>Generations</h2>
      <ul class="legend" data-testid="generations">
        ${generations.map((generation, index) => html`<li><span class="gen gen-${colour(generation)}">generation ${index + 1}</span> <span class="mono">${generation}</span></li>`)}
      </ul>
      <h2>Timeline</h2>
      ${call.truncated ? html`<p class="note">Older records of this partition are gone (retention) or past what the console reads; the timeline starts later.</p>` : ''}
      <ol class="timeline" data-testid="timeline">
        ${shownTimeline(call.timeline).map((entry) =>
          typeof entry === 'number'
            ? html`<li class="gap">
                … ${entry} events not shown: the first ${TIMELINE_HEAD} and the last
                ${TIMELINE_TAIL} are, and every generation start and end …
              </li>`
            : timelineItem(
                ctx,
                entry,
                generations.indexOf(entry.generation) + 1,
                colour(entry.generation),
              ),
        )}
      </ol>`,
  );
}

/** What folding a record did, as a reader of the stream would put it. */
const EFFECT_WORDS: Readonly<Record<FoldEffect, string>> = {
  started: 'starts the stream',
  superseded: 'supersedes the earlier generation',
  appended: 'appended',
  gap: 'appended after a gap',
  terminal: 'ends the stream',
  duplicate: 'duplicate, skipped',
  'dropped-superseded': 'of a superseded generation, dropped',
  'dropped-after-terminal': 'after the end, dropped',
  'dropped-behind-position': 'already folded, dropped',
};

/** Events shown of a long call: the first and the last ones, every start and end in between. */
const TIMELINE_HEAD = 500;
const TIMELINE_TAIL = 1_500;

/** The timeline to render: entries, and in place of each run of events left out, their count. */
function shownTimeline(timeline: readonly TimelineEntry[]): Array<TimelineEntry | number> {
  if (timeline.length <= TIMELINE_HEAD + TIMELINE_TAIL) return [...timeline];
  const shown: Array<TimelineEntry | number> = [];
  let left = 0;
  timeline.forEach((entry, index) => {
    const kept =
      entry.kind !== 'message' || index < TIMELINE_HEAD || index >= timeline.length - TIMELINE_TAIL;
    if (!kept) return void left++;
    if (left > 0) shown.push(left);
    left = 0;
    shown.push(entry);
  });
  return shown;
}

function timelineItem(
  ctx: PageContext,
  entry: TimelineEntry,
  number: number,
  colour: number,
): Html {
  const reset =
    entry.kind === 'generation-start' && entry.effect === 'superseded'
      ? html`<div class="reset" data-testid="reset">
          Reset: <strong>generation-superseded</strong> — a new execution
          (${entry.cause ?? 'retry'}) replaces generation ${number - 1}; clients are told to discard
          what they had.
        </div>`
      : '';
  return html`<li
    class="entry kind-${entry.kind} gen-border-${colour}${entry.effect.startsWith('dropped') ? ' dropped' : ''}"
  >
    ${reset}<span class="gen gen-${colour}">gen ${number}</span>
    <span class="seq">#${entry.seq}</span>
    <span class="summary">${entry.summary}</span>
    <span class="meta"
      >${EFFECT_WORDS[entry.effect]} · offset ${entry.offset.toString()} ·
      ${time(entry.atMs, ctx.now)}</span
    >
  </li>`;
}

function taskHistory(ctx: PageContext, call: CallDetail): Html {
  const task = call.task!;
  return html`<h2>Task status</h2>
    <p>
      Now:
      <span class="status status-${task.status}" data-testid="task-status">${task.status}</span>
    </p>
    <ol class="history">
      ${task.changes.map((change) => html`<li><span class="status status-${change.status}">${change.status}</span> ${time(change.atMs, ctx.now)} — ${change.note}</li>`)}
    </ol>`;
}

/**
 * The call's durable steps as its journal holds them: each ran once, in the generation named; a
 * later generation replayed it instead of running it again.
 */
function stepList(ctx: PageContext, call: CallDetail, generations: readonly string[]): Html {
  return html`<h2>Steps</h2>
    <p class="note">
      Journaled once each; a later execution of this call replays them instead of running them
      again.
    </p>
    <ol class="history" data-testid="steps">
      ${call.steps.map((step) => {
        const index = generations.indexOf(step.generation);
        const ran = index < 0 ? step.generation : `generation ${index + 1}`;
        if (!isStepOutcome(step)) {
          const { attempts, nextAtMs, error } = step.retrying;
          return html`<li>
            <span class="mono">${step.step}</span> — retrying: try ${attempts} failed
            (${error.message}), the next ${time(nextAtMs, ctx.now)}, in ${ran}
          </li>`;
        }
        // A durable sleep's step holds its wake time: asleep until then, else woken.
        const wakeAtMs =
          step.step.startsWith('sleep ') && step.outcome.ok ? step.outcome.value : undefined;
        if (typeof wakeAtMs === 'number')
          return html`<li data-testid="sleep">
            <span class="mono">${step.step}</span> — ${wakeAtMs > ctx.now ? 'asleep until' : 'woke'}
            ${time(wakeAtMs, ctx.now)}, fell asleep in ${ran}
          </li>`;
        const signal = signalItem(ctx, call, step, ran);
        if (signal !== undefined) return signal;
        const outcome = step.outcome.ok ? 'ok' : `failed: ${step.outcome.error.message}`;
        const tries = step.attempts === undefined ? '' : ` after ${step.attempts} tries`;
        return html`<li>
          <span class="mono">${step.step}</span> — ${outcome}${tries}, ran in ${ran}
          (${Math.round(step.durationMs)} ms) · ${time(step.atMs, ctx.now)}
        </li>`;
      })}
    </ol>`;
}

type JournaledStepOf = Extract<CallDetail['steps'][number], { outcome: unknown }>;

/**
 * A signal's steps (`ex.signal`): asked — waiting, or answered — and its answer: what was POSTed,
 * when, and by which subject if the POST carried a token (the audit trail of an approval). Its URL
 * is a capability and is never shown.
 */
function signalItem(
  ctx: PageContext,
  call: CallDetail,
  step: JournaledStepOf,
  ran: string,
): Html | undefined {
  if (step.step.startsWith('signal ') && step.outcome.ok) {
    const name = step.step.slice('signal '.length);
    const { expiresAtMs } = step.outcome.value as { expiresAtMs?: number };
    const answered = call.steps.some((s) => s.step === signalAnswerStep(name));
    const until = expiresAtMs === undefined ? '' : html`, open until ${time(expiresAtMs, ctx.now)}`;
    return html`<li data-testid="signal">
      <span class="mono">${step.step}</span> — asked in
      ${ran}${until}${answered ? '' : ' — waiting'}
    </li>`;
  }
  if (!step.step.startsWith(signalAnswerStep(''))) return undefined;
  if (!step.outcome.ok)
    return html`<li data-testid="signal-answer">
      <span class="mono">${step.step}</span> — expired unanswered ${time(step.atMs, ctx.now)}
    </li>`;
  const { value, subject } = step.outcome.value as { value: unknown; subject?: string };
  const shown = JSON.stringify(value) ?? 'null';
  return html`<li data-testid="signal-answer">
    <span class="mono">${step.step}</span> — answered ${time(step.atMs, ctx.now)}
    ${subject === undefined ? 'through its URL' : `by ${subject}`}:
    <span class="mono">${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}</span>
  </li>`;
}
