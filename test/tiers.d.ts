// The types of test/tiers.js (plain CommonJS: jest.config.js and scripts/test.mjs load it untranspiled).
export interface Tier {
  needs: string;
  specs: string[];
}
export const TIERS: Record<string, Tier>;
export const SERIAL: string[];
export const SLOW: string[];
export function allSpecs(): string[];
export function specsOf(selection: string, files?: string[]): string[];
export function problems(files?: string[]): string[];
