/**
 * One cell of a spread set (e2e/src/cells.ts), run in this process:
 *
 *   tsx e2e/src/cli-cell.ts --cell JSON --result PATH    what each Ray task of lab/nuwa_lab/spread.py
 *                                                       runs: one CellWork, its output (JSON) to PATH
 *   tsx e2e/src/cli-cell.ts --cells FILE --result PATH   several ({"cells": [CellWork, ...]}) one
 *                                                       after another in this one process, the
 *                                                       outputs as a JSON array: the serial path,
 *                                                       which lab/tests/test_spread.py compares
 *                                                       the Ray path with
 * Progress lines go to stderr. Exit 0 when the output is written (an end-to-end run that failed is
 * still a record, with its error), 1 when the work threw, 2 on bad arguments.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { type CellWork, runCell } from "./cells.js";
import { parseCli, usageError } from "./cli-args.js";

const USAGE = `tsx e2e/src/cli-cell.ts (--cell JSON | --cells FILE) --result PATH   (e2e/src/cells.ts)`;
const values = parseCli(USAGE, { cell: { type: "string" }, cells: { type: "string" }, result: { type: "string" } });
if ((values.cell === undefined) === (values.cells === undefined)) usageError(USAGE, "give one of --cell, --cells");
if (!values.result) usageError(USAGE, "--result PATH is required");
let works: CellWork[];
try {
  works = values.cell !== undefined ? [JSON.parse(values.cell) as CellWork] : (JSON.parse(readFileSync(values.cells!, "utf8")) as { cells: CellWork[] }).cells;
} catch (e) {
  usageError(USAGE, `not a cell: ${(e as Error).message}`);
}
const log = (s: string) => console.error(`[cell] ${s}`);
const outputs: unknown[] = [];
for (const w of works) outputs.push(await runCell(w, log));
writeFileSync(values.result, JSON.stringify(values.cell !== undefined ? outputs[0] : outputs));
