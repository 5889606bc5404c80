// The part of uPlot's interface the usage page uses (the library ships no types in this copy).
export default class uPlot {
  constructor(options: object, data: ArrayLike<number | null>[], target: HTMLElement);
  static tzDate(date: Date, timeZone: string): Date;
  setSize(size: { width: number; height: number }): void;
  destroy(): void;
}
