/**
 * Size check (style: files <= 250 lines, functions <= 60 lines), Lua and
 * generated files aside. Prints offenders; exits 0 (a report, not a gate).
 * Usage: pnpm tsx scripts/sizes.ts [dir…] (default: packages/*\/src)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const roots = process.argv.slice(2).length > 0 ? process.argv.slice(2) : readdirSync('packages').map((name) => join('packages', name, 'src'));
const files: string[] = [];
const walk = (dir: string) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.ts')) files.push(path);
  }
};
roots.forEach(walk);

const longFiles: string[] = [];
const longFunctions: string[] = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n').length;
  if (lines > 250) longFiles.push(`${lines}\t${file}`);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = (node as ts.FunctionDeclaration).name?.getText() ?? '(anonymous)';
      if (end - start + 1 > 60) longFunctions.push(`${end - start + 1}\t${file}:${start + 1} ${name}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
console.log(`files > 250 lines (${longFiles.length}):\n${longFiles.join('\n')}`);
console.log(`functions > 60 lines (${longFunctions.length}):\n${longFunctions.join('\n')}`);
