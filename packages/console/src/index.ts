export { CONSOLE_DEFAULTS, createConsole } from './console.js';
export type { Console, ConsoleOptions } from './console.js';
export { ResumeJournal } from './resume-journal.js';
export type { ResumeEntry } from './resume-journal.js';
