export { CONSOLE_DEFAULTS, createConsole } from './console.js';
export type { Console, ConsoleOptions } from './console.js';
export { ResumeJournal } from './resume-journal.js';
export type { JournalEntry, ResumeEntry, ResumeJournalOptions } from './resume-journal.js';
