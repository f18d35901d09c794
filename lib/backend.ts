// `nestjs-rheo/backend`: what only a backend author writes, each exported by name (ADR 042).
// A backend imports the rest from `nestjs-rheo` (the Backend interface, RheoError, Lease,
// RheoEvent, GroupConfig, Clock, …): every name has one entry, and no name is in both.
// A third-party backend proves itself by running the bundled ones' cases
// (`runConformance({ name, create, unreachable })` inside a Jest test file).
// test/unit/exports.spec.ts pins these lists: a change to them is deliberate.

// The Backend contract's requests and answers (lib/backends/backend.ts).
export type {
  NewEvent,
  AppendedEvents,
  ClaimDeadLetter,
  FetchedLeases,
  FlowHeld,
  ResolvedStart,
  CreateGroupRequest,
  FetchRequest,
  SettleOp,
  SettleResult,
  SettleWritten,
  RenewResult,
  ReadRequest,
  QueryRequest,
  ReplayRequest,
  TrimRequest,
  BackendDescription,
  TransactionalAck,
  WaitRequest,
} from './backends/backend';
// The parts of stored events and groups a backend reads and writes, which users only meet inside the types above.
export type { EventMetadata, Retention, StartPosition, RetryBackoff, Ordering, PartitionLag, QueryWhere } from './core/types';
// What a backend declares it does: the conformance suite registers cases by it.
export { createCapabilities, type Capabilities, type CapabilitiesInput, type Guarantees, type Mechanisms } from './backends/capabilities';
// Append (Backend.append): the stored events with how many were idempotent repeats.
export { appended } from './core/appended';
// What a backend remembers of streams and groups and shares with the facade (Backend.registrations, ADR 044).
export { Registrations } from './core/registrations';
// Fetch (Backend.fetch): the leases with the deliveries the claim dead-lettered.
export { fetched } from './core/fetched';
// Delayed events (ADR 028): a claim that parks delayed events claims again for their places.
export { claimPastDelays, PARKING_ROUNDS, type ClaimRound } from './backends/delays';
// A nack without a delay waits the group's backoff after the attempt: the one formula every backend uses.
export { backoffDelay } from './core/backoff';
// Errors at the backend's edge: the closed list of codes, a RheoError's options, and a driver error mapped to one.
export { RHEO_ERROR_CODES, toRheoError, type RheoErrorOptions } from './core/errors';
// Time: the process clock (a backend's default), and the store clock a distributed backend attaches to (ADR 041).
export { systemClock, StoreClock, type StoreTimeReader } from './core/clock';
// The conformance suite itself.
export { runConformance, type ConformanceTarget } from './conformance/suite';
