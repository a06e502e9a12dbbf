export { createConsole } from './console.js';
export type { Console } from './console.js';
export { CONSOLE_DEFAULTS } from './console-options.js';
export type { ConsoleOptions } from './console-options.js';
export { ResumeJournal } from './resume-journal.js';
export type { JournalEntry, ResumeEntry, ResumeJournalOptions } from './resume-journal.js';
