#!/usr/bin/env node
// The `ask-user` command of the npm package: runs the native binary that npm installed for this
// platform (the optional dependency `@ask-user/<os>-<cpu>[-gnu|-musl]`), or the one
// `ASK_USER_BINARY` names, with this process's arguments, standard streams and signals, and
// exits as it does. Nothing is downloaded.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");

/** `-gnu` or `-musl` on Linux (the C library this Node.js runs on), else nothing. */
function libcSuffix() {
  if (process.platform !== "linux") return "";
  const report = typeof process.report?.getReport === "function" ? process.report.getReport() : null;
  return report?.header?.glibcVersionRuntime ? "-gnu" : "-musl";
}

function fail(message) {
  process.stderr.write(`ask-user (npm launcher): ${message}\n`);
  process.exit(1);
}

/** The binary to run. */
function binary() {
  const own = process.env.ASK_USER_BINARY;
  if (own) {
    if (!fs.existsSync(own)) fail(`ASK_USER_BINARY names ${JSON.stringify(own)}, which does not exist`);
    return own;
  }
  const platform = `${process.platform}-${process.arch}${libcSuffix()}`;
  const exe = process.platform === "win32" ? "ask-user.exe" : "ask-user";
  const name = `@ask-user/${platform}`;
  try {
    return require.resolve(`${name}/bin/${exe}`);
  } catch {
    fail(
      `no binary for ${platform}: the package ${name} is not installed. npm installs it with ask-user ` +
        `when ask-user is built for this platform (not with --omit=optional). Otherwise set ` +
        `ASK_USER_BINARY to an ask-user binary of your own (cargo install ask-user-cli), or run ` +
        `uvx ask-user.`,
    );
  }
}

const program = binary();
const child = spawn(program, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
// A signal for this process is the binary's: it ends its questions and exits itself.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
for (const signal of forwarded) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => fail(`cannot run ${JSON.stringify(program)}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Ends the same way, so whoever started this sees the signal.
    for (const s of forwarded) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
