(module
  ;; The caller copies the body into [0, len) and grows the memory to hold
  ;; 2 × len + 16 bytes: the output goes to [len, ...), never longer than the input.
  (memory (export "memory") 1)
  ;; unescape(len): decodes memory[0, len), the body of a JSON string without
  ;; its quotes, into memory[len, ...). Returns the decoded length, or -1
  ;; where the body is not one this decodes exactly as JSON.parse would: a \u
  ;; escape (left to the caller), a raw control character or quote, an
  ;; unknown escape, a backslash at the end.
  (func (export "unescape") (param $len i32) (result i32)
    (local $i i32) (local $o i32) (local $c i32) (local $x v128) (local $m i32)
    (local.set $o (local.get $len))
    (block $done
      (loop $next
        ;; Sixteen bytes at a time: copy them all, then step over the plain ones
        ;; before the first backslash, quote or control character (the rest is
        ;; written again from the right place).
        (if (i32.le_u (i32.add (local.get $i) (i32.const 16)) (local.get $len))
          (then
            (local.set $x (v128.load (local.get $i)))
            (v128.store (local.get $o) (local.get $x))
            (local.set $m (i8x16.bitmask
              (v128.or
                (v128.or
                  (i8x16.eq (local.get $x) (i8x16.splat (i32.const 0x5c)))
                  (i8x16.eq (local.get $x) (i8x16.splat (i32.const 0x22))))
                (i8x16.lt_u (local.get $x) (i8x16.splat (i32.const 0x20))))))
            (if (i32.eqz (local.get $m))
              (then
                (local.set $i (i32.add (local.get $i) (i32.const 16)))
                (local.set $o (i32.add (local.get $o) (i32.const 16)))
                (br $next)))
            (local.set $c (i32.ctz (local.get $m)))
            (local.set $i (i32.add (local.get $i) (local.get $c)))
            (local.set $o (i32.add (local.get $o) (local.get $c)))))
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $c (i32.load8_u (local.get $i)))
        (if (i32.eq (local.get $c) (i32.const 0x5c))
          (then
            (if (i32.ge_u (i32.add (local.get $i) (i32.const 1)) (local.get $len)) (then (return (i32.const -1))))
            (local.set $c (i32.load8_u offset=1 (local.get $i)))
            (block $mapped
              (if (i32.eq (local.get $c) (i32.const 0x6e)) (then (local.set $c (i32.const 0x0a)) (br $mapped)))
              (br_if $mapped (i32.eq (local.get $c) (i32.const 0x22)))
              (br_if $mapped (i32.eq (local.get $c) (i32.const 0x5c)))
              (br_if $mapped (i32.eq (local.get $c) (i32.const 0x2f)))
              (if (i32.eq (local.get $c) (i32.const 0x74)) (then (local.set $c (i32.const 0x09)) (br $mapped)))
              (if (i32.eq (local.get $c) (i32.const 0x72)) (then (local.set $c (i32.const 0x0d)) (br $mapped)))
              (if (i32.eq (local.get $c) (i32.const 0x62)) (then (local.set $c (i32.const 0x08)) (br $mapped)))
              (if (i32.eq (local.get $c) (i32.const 0x66)) (then (local.set $c (i32.const 0x0c)) (br $mapped)))
              (return (i32.const -1)))
            (i32.store8 (local.get $o) (local.get $c))
            (local.set $o (i32.add (local.get $o) (i32.const 1)))
            (local.set $i (i32.add (local.get $i) (i32.const 2)))
            (br $next)))
        (if (i32.or (i32.lt_u (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x22)))
          (then (return (i32.const -1))))
        (i32.store8 (local.get $o) (local.get $c))
        (local.set $o (i32.add (local.get $o) (i32.const 1)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.sub (local.get $o) (local.get $len)))
)
