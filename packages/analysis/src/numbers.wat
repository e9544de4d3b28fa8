(module
  ;; The fast path of the scanner's integer arrays (scanner.ts, numbers.ts):
  ;; V8 writes `nodes` and `edges` as `digits,` and `digits\n,`. Both routines
  ;; start just after a comma, take whole values only, and stop at anything
  ;; else (the array's end, other whitespace, an error, the window's end),
  ;; returning the offset just after the last comma they took: the caller's
  ;; byte-by-byte state machine goes on from there, so errors and offsets stay
  ;; its own. $count is the number of values taken.
  ;;
  ;; Memory (7 pages): the window of input at [0, 256 KiB + 16); the output
  ;; values (f64) from 256 KiB + 64 on, 16,384 of them at most.
  (memory (export "memory") 7)
  (global $count (export "count") (mut i32) (i32.const 0))
  ;; skip(start, end): counts the values of [start, end), 16 bytes at a time
  ;; (SIMD), checking that each byte is a digit, a comma or a newline, and
  ;; that it may follow the byte before it: a comma follows a digit or a
  ;; newline, a newline a digit, a digit a digit or a comma. The byte before
  ;; `start` is a comma.
  (func (export "skip") (param $start i32) (param $end i32) (result i32)
    (local $i i32) (local $x v128) (local $d v128) (local $c v128) (local $n v128)
    (local $d0 v128) (local $c0 v128) (local $n0 v128) (local $pd v128) (local $pc v128) (local $pn v128)
    (local $total i32)
    (local.set $i (local.get $start))
    (local.set $c0 (v128.const i8x16 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -1))
    (block $done
      (loop $next
        (br_if $done (i32.gt_u (i32.add (local.get $i) (i32.const 16)) (local.get $end)))
        (local.set $x (v128.load (local.get $i)))
        (local.set $d (i8x16.lt_u (i8x16.sub (local.get $x) (i8x16.splat (i32.const 0x30))) (i8x16.splat (i32.const 10))))
        (local.set $c (i8x16.eq (local.get $x) (i8x16.splat (i32.const 0x2c))))
        (local.set $n (i8x16.eq (local.get $x) (i8x16.splat (i32.const 0x0a))))
        ;; The same classes one byte earlier: the previous block's last lane first.
        (local.set $pd (i8x16.shuffle 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 (local.get $d0) (local.get $d)))
        (local.set $pc (i8x16.shuffle 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 (local.get $c0) (local.get $c)))
        (local.set $pn (i8x16.shuffle 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 (local.get $n0) (local.get $n)))
        (br_if $done (v128.any_true
          (v128.or
            (v128.or
              (v128.not (v128.or (v128.or (local.get $d) (local.get $c)) (local.get $n)))
              (v128.andnot (local.get $c) (v128.or (local.get $pd) (local.get $pn))))
            (v128.or
              (v128.andnot (local.get $n) (local.get $pd))
              (v128.andnot (local.get $d) (v128.or (local.get $pd) (local.get $pc)))))))
        (local.set $total (i32.add (local.get $total) (i32.popcnt (i8x16.bitmask (local.get $c)))))
        (local.set $d0 (local.get $d))
        (local.set $c0 (local.get $c))
        (local.set $n0 (local.get $n))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $next)))
    ;; [start, i) is checked: back to just after its last comma (none of the
    ;; bytes stepped back over is one, so $total stays right).
    (block $back
      (loop $prev
        (br_if $back (i32.le_u (local.get $i) (local.get $start)))
        (br_if $back (i32.eq (i32.load8_u (i32.sub (local.get $i) (i32.const 1))) (i32.const 0x2c)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (br $prev)))
    (global.set $count (local.get $total))
    (local.get $i))
  ;; parse(start, end, out, max): the values of [start, end), at most `max`
  ;; of them, as f64 from `out` on; byte by byte (SIMD parsing measured slower:
  ;; each value's length depends on the one before). Stops before a value of
  ;; more than 15 digits (exact as f64 below that; the caller's path takes it).
  (func (export "parse") (param $start i32) (param $end i32) (param $out i32) (param $max i32) (result i32)
    (local $i i32) (local $c i32) (local $d i32) (local $v i64) (local $k i32) (local $n i32)
    (local.set $i (local.get $start))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $n) (local.get $max)))
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        (local.set $d (i32.sub (i32.load8_u (local.get $i)) (i32.const 0x30)))
        (br_if $done (i32.gt_u (local.get $d) (i32.const 9)))
        (local.set $v (i64.extend_i32_u (local.get $d)))
        (local.set $k (i32.add (local.get $i) (i32.const 1)))
        (block $num
          (loop $digit
            (br_if $done (i32.ge_u (local.get $k) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $k)))
            (local.set $d (i32.sub (local.get $c) (i32.const 0x30)))
            (br_if $num (i32.gt_u (local.get $d) (i32.const 9)))
            (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10)) (i64.extend_i32_u (local.get $d))))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $digit)))
        (br_if $done (i32.gt_u (i32.sub (local.get $k) (local.get $i)) (i32.const 15)))
        (if (i32.eq (local.get $c) (i32.const 0x0a))
          (then
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br_if $done (i32.ge_u (local.get $k) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $k)))))
        (br_if $done (i32.ne (local.get $c) (i32.const 0x2c)))
        (f64.store (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 3))) (f64.convert_i64_u (local.get $v)))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $i (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    (global.set $count (local.get $n))
    (local.get $i))
)
