/** The `durable-a2a` executable: runs one command line and exits with its code (see EXIT_CODES). */
import { run } from './program.ts';

// A reader that stops early (`durable-a2a list | head`) closes stdout: stop quietly, as command-line tools do.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit();
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
