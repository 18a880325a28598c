import { run } from './recovery.ts';
const r = await run(1);
console.log(JSON.stringify(r.figures));
process.exit(0);
