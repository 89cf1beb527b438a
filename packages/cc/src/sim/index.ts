/** Simulation helpers of @nuwa/cc: Mahimahi traces, a drop-tail trace link, a bulk-download simulation. */
export { simulateBulk, percentile, type BulkSimOptions, type BulkSimResult } from "./bulk.js";
export { TraceLink, type Departure, type LinkPacket } from "./link.js";
export { parseMahimahiTrace, constantRateTrace, traceMeanBps, MAHIMAHI_PACKET_BYTES } from "./trace.js";
