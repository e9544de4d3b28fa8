/** The part of d3-flame-graph 5's API the console uses (the package ships no types). */
declare module 'd3-flame-graph' {
  /** A laid-out node: d3-hierarchy's, with the caller's datum in `data`. */
  export interface FlameNode<T> {
    data: T;
    value: number;
    depth: number;
    x0: number;
    x1: number;
    parent: FlameNode<T> | null;
    children?: FlameNode<T>[];
  }
  export interface FlameGraph<T> {
    (selection: unknown): void;
    width(w: number): FlameGraph<T>;
    cellHeight(h: number): FlameGraph<T>;
    inverted(on: boolean): FlameGraph<T>;
    transitionDuration(ms: number): FlameGraph<T>;
    minFrameSize(px: number): FlameGraph<T>;
    sort(on: boolean): FlameGraph<T>;
    title(t: string): FlameGraph<T>;
    setColorMapper(f: (d: FlameNode<T>, original: string) => string): FlameGraph<T>;
    setLabelHandler(f: (d: FlameNode<T>) => string): FlameGraph<T>;
    onClick(f: (d: FlameNode<T>) => void): FlameGraph<T>;
    update(): void;
    resetZoom(): void;
    destroy(): void;
  }
  export default function flamegraph<T>(): FlameGraph<T>;
}
