;; One pass over UTF-8 bytes: counts tokens (the rules of src/lib/tokens.ts) and hashes them.
;;
;; Memory (written by the host, see scanner.ts):
;;   0..255     byte class: 0 whitespace, 1 word character, 2 a one-token character (other
;;              ASCII, or the first byte of a non-ASCII character), 3 UTF-8 continuation byte
;;   256..1279  run table, [state * 256 + mask] = tokens | next_state << 4, for 8 bytes whose
;;              word-character bits are `mask`; state = bytes into the current word run mod 4
;;   2048..     the text
;; 16 bytes per step with SIMD: classify, count one-token bytes with popcnt, look the word
;; bits up in the run table; the hash takes the same 16 bytes as four 32-bit words.
(module
  (memory (export "memory") 1)
  (global $state (mut i32) (i32.const 0))
  (global $a (mut i32) (i32.const 0))
  (global $b (mut i32) (i32.const 0))

  (func (export "reset") (param $a i32) (param $b i32) (param $state i32)
    (global.set $a (local.get $a))
    (global.set $b (local.get $b))
    (global.set $state (local.get $state)))

  ;; Mixes a marker (a block boundary, a role) into the hash and ends any word run.
  (func (export "mix") (param $v i32)
    (global.set $a (i32.mul (i32.xor (global.get $a) (local.get $v)) (i32.const 0x01000193)))
    (global.set $b (i32.mul (i32.xor (global.get $b) (local.get $v)) (i32.const 0x5bd1e995)))
    (global.set $state (i32.const 0)))

  (func (export "hashA") (result i32) (global.get $a))
  (func (export "hashB") (result i32) (global.get $b))
  (func (export "state") (result i32) (global.get $state))

  ;; Reads $len bytes at 2048; returns the tokens that start in them.
  (func (export "scan") (param $len i32) (result i32)
    (local $p i32) (local $end i32) (local $count i32) (local $s i32)
    (local $a i32) (local $b i32) (local $m i32) (local $e i32) (local $c i32) (local $k i32)
    (local $v v128) (local $word v128) (local $skip v128)
    (local.set $p (i32.const 2048))
    (local.set $end (i32.add (i32.const 2048) (local.get $len)))
    (local.set $s (global.get $state))
    (local.set $a (global.get $a))
    (local.set $b (global.get $b))
    (block $wide_done
      (loop $wide
        (br_if $wide_done (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $end)))
        (local.set $v (v128.load (local.get $p)))
        ;; word = [0-9A-Za-z_]
        (local.set $word
          (v128.or
            (v128.or
              (i8x16.lt_u (i8x16.sub (local.get $v) (i8x16.splat (i32.const 48))) (i8x16.splat (i32.const 10)))
              (i8x16.lt_u (i8x16.sub (local.get $v) (i8x16.splat (i32.const 65))) (i8x16.splat (i32.const 26))))
            (v128.or
              (i8x16.lt_u (i8x16.sub (local.get $v) (i8x16.splat (i32.const 97))) (i8x16.splat (i32.const 26)))
              (i8x16.eq (local.get $v) (i8x16.splat (i32.const 95))))))
        ;; bytes that start no token by themselves: whitespace (9..13, 32) and continuation bytes
        (local.set $skip
          (v128.or
            (v128.or
              (i8x16.eq (local.get $v) (i8x16.splat (i32.const 32)))
              (i8x16.lt_u (i8x16.sub (local.get $v) (i8x16.splat (i32.const 9))) (i8x16.splat (i32.const 5))))
            (i8x16.eq (v128.and (local.get $v) (i8x16.splat (i32.const 0xc0))) (i8x16.splat (i32.const 0x80)))))
        (local.set $count
          (i32.add (local.get $count)
            (i32.popcnt (i8x16.bitmask (v128.not (v128.or (local.get $word) (local.get $skip)))))))
        (local.set $m (i8x16.bitmask (local.get $word)))
        (local.set $e (i32.load8_u offset=256
          (i32.or (i32.shl (local.get $s) (i32.const 8)) (i32.and (local.get $m) (i32.const 255)))))
        (local.set $count (i32.add (local.get $count) (i32.and (local.get $e) (i32.const 15))))
        (local.set $s (i32.shr_u (local.get $e) (i32.const 4)))
        (local.set $e (i32.load8_u offset=256
          (i32.or (i32.shl (local.get $s) (i32.const 8)) (i32.shr_u (local.get $m) (i32.const 8)))))
        (local.set $count (i32.add (local.get $count) (i32.and (local.get $e) (i32.const 15))))
        (local.set $s (i32.shr_u (local.get $e) (i32.const 4)))
        (local.set $a (i32.mul (i32.xor (local.get $a) (i32.load (local.get $p))) (i32.const 0x01000193)))
        (local.set $b (i32.mul (i32.xor (local.get $b) (i32.load (local.get $p))) (i32.const 0x5bd1e995)))
        (local.set $a (i32.mul (i32.xor (local.get $a) (i32.load offset=4 (local.get $p))) (i32.const 0x01000193)))
        (local.set $b (i32.mul (i32.xor (local.get $b) (i32.load offset=4 (local.get $p))) (i32.const 0x5bd1e995)))
        (local.set $a (i32.mul (i32.xor (local.get $a) (i32.load offset=8 (local.get $p))) (i32.const 0x01000193)))
        (local.set $b (i32.mul (i32.xor (local.get $b) (i32.load offset=8 (local.get $p))) (i32.const 0x5bd1e995)))
        (local.set $a (i32.mul (i32.xor (local.get $a) (i32.load offset=12 (local.get $p))) (i32.const 0x01000193)))
        (local.set $b (i32.mul (i32.xor (local.get $b) (i32.load offset=12 (local.get $p))) (i32.const 0x5bd1e995)))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $wide)))
    ;; the last bytes, one at a time
    (block $done
      (loop $narrow
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (local.set $k (i32.load8_u (local.get $c)))
        (if (i32.eq (local.get $k) (i32.const 1))
          (then
            (local.set $count (i32.add (local.get $count) (i32.eqz (local.get $s))))
            (local.set $s (i32.and (i32.add (local.get $s) (i32.const 1)) (i32.const 3))))
          (else
            (local.set $s (i32.const 0))
            (local.set $count (i32.add (local.get $count) (i32.eq (local.get $k) (i32.const 2))))))
        (local.set $a (i32.mul (i32.xor (local.get $a) (local.get $c)) (i32.const 0x01000193)))
        (local.set $b (i32.mul (i32.xor (local.get $b) (local.get $c)) (i32.const 0x5bd1e995)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $narrow)))
    (global.set $state (local.get $s))
    (global.set $a (local.get $a))
    (global.set $b (local.get $b))
    (local.get $count)))
