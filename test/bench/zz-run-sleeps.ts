import { runSleeps, sleepsTable } from './sleeps.ts';
const r = await runSleeps({ brokers: ['127.0.0.1:19092'], tasks: Number(process.argv[2]), sleepMs: Number(process.argv[3]) });
console.log(sleepsTable(r));
