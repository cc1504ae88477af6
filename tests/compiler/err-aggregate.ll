; PASS: llview
; ERROR: aggregate or vector
; A vector read from kernel memory other than two words (km_pair's
; <2 x i64>): read fields one by one.
@init_task = external global [4096 x i8]

define i32 @km_vec() {
  %v = load <4 x i32>, ptr @init_task
  %x = extractelement <4 x i32> %v, i32 0
  ret i32 %x
}
