/** A DTO value with its own `toJSON` (what a Nest app's value objects look like): stored as `"12.5 EUR"`. */
export class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
  toJSON(): string {
    return `${this.amount} ${this.currency}`;
  }
}
