// `nestjs-rheo/backend`: what a backend author needs, and nothing a user does.
// The Backend contract and its request/response types, capabilities, the error
// vocabulary, the test clock, and the conformance suite itself: a third-party
// backend proves itself by running the same cases as the bundled ones
// (`runConformance({ name, create, unreachable })` inside a Jest test file).
export type * from './backends/backend';
export { createCapabilities } from './backends/capabilities';
// Append (Backend.append): the stored events with how many were idempotent repeats.
export { appended } from './core/appended';
// Fetch (Backend.fetch): the leases with the deliveries the claim dead-lettered.
export { fetched } from './core/fetched';
export type { Capabilities, CapabilitiesInput, Guarantees, Mechanisms } from './backends/capabilities';
export { RheoError, isRheoError, toRheoError, RHEO_ERROR_CODES } from './core/errors';
export type { RheoErrorCode, RheoErrorOptions } from './core/errors';
export { ManualClock, StoreClock, storeClock, systemClock } from './core/clock';
export type { Clock, StoreClockOptions, StoreTimeReader } from './core/clock';
// Delayed events (ADR 028): a claim that parks delayed events claims again for their places.
export { claimPastDelays, PARKING_ROUNDS } from './backends/delays';
export type { ClaimRound } from './backends/delays';
export { runConformance } from './conformance/suite';
export type { ConformanceTarget } from './conformance/suite';
