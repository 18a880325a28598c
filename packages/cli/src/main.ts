/** The `durable-a2a` executable: runs one command line and exits with its code (see EXIT_CODES). */
import { run } from './program.ts';

process.exitCode = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
