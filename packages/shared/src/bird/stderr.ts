// What `bird -p` writes on stderr, one line at a time. BIRD 2.0 writes `bird: file:line:col
// message`; BIRD 3 stamps every line (`bird: 2026-11-27 03:36:22.689 [0001] <FATAL> file:…`);
// BIRD 2.17 and 3.x warn before the error when a BGP protocol has a password and no
// `authentication` (`file:line:col: Missing authentication option, assuming MD5`, with a colon
// after the column, as every BIRD warning). Captured text: fixtures/bird-p-*.txt.

/** BIRD 3's stamp: time, thread and level, after the program's name. */
const STAMP = /^(?:bird: )?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[0-9a-f]+\] <([A-Z]+)> /;
const PROGRAM = /^bird: /;
/** cf_warn's form on every version: the colon after the column tells it from an error. */
const LOCATED_WARNING = /^.+?:\d+:\d+: /;

export interface StderrLine {
  /** The line without `bird: ` and BIRD 3's stamp: `file:line:col message` or a bare message. */
  text: string;
  warning: boolean;
}

/** One stderr line of BIRD, any version. */
export function readStderrLine(line: string): StderrLine {
  const stamped = STAMP.exec(line);
  const text = stamped ? line.slice(stamped[0].length) : line.replace(PROGRAM, "");
  const level = stamped?.[1];
  const warning = level ? level === "WARN" || level === "INFO" || level === "TRACE" || level === "DBG" : LOCATED_WARNING.test(text);
  return { text: text.trim(), warning };
}

/** The line that says why BIRD refused the file: the first that is no warning (else the first at all), unprefixed. */
export function birdErrorLine(stderr: string): string {
  const lines = stderr
    .split("\n")
    .filter((l) => l.trim())
    .map(readStderrLine);
  return (lines.find((l) => !l.warning) ?? lines[0])?.text ?? "";
}
