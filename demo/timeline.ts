/**
 * A readable timeline for the demo: headings, notes with elapsed time, and
 * expectations that decide the exit code.
 */
export class Timeline {
  private readonly start = Date.now();
  private readonly failures: string[] = [];
  private passed = 0;

  private stamp(): string {
    return `${((Date.now() - this.start) / 1000).toFixed(1).padStart(5)}s`;
  }

  heading(text: string): void {
    console.log(`\n${text}`);
  }

  note(text: string): void {
    console.log(`  ${this.stamp()}  ${text}`);
  }

  /** Records an expectation; the demo exits non-zero if any fails. */
  expect(what: string, held: boolean): void {
    if (held) this.passed++;
    else this.failures.push(what);
    console.log(`  ${this.stamp()}  ${held ? '✔' : '✘'} ${what}`);
  }

  fail(error: unknown): void {
    this.failures.push(error instanceof Error ? error.message : String(error));
    console.log(`  ${this.stamp()}  ✘ ${error instanceof Error ? error.message : String(error)}`);
  }

  /** Prints the verdict; true when every expectation held. */
  summary(): boolean {
    const ok = this.failures.length === 0;
    console.log(`\n${ok ? 'PASS' : 'FAIL'}: ${this.passed} expectations held${ok ? '' : `, ${this.failures.length} failed: ${this.failures.join('; ')}`}`);
    return ok;
  }
}
