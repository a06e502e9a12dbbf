/**
 * stateless/ — the 2026-07-28 lane. `StatelessLane` dispatches a partition's keyed requests; a
 * `StatelessExchange` answers one (or makes it a task); `idempotent-calls.ts` has a later request
 * with the same idempotency key wait for, or join, the first.
 */
export { StatelessLane } from './stateless-lane.js';
