; PASS: llview
; ERROR: aggregate or vector
; A whole struct or a vector read from kernel memory: read fields one by one.
@init_task = external global [4096 x i8]

define i64 @km_vec() {
  %v = load <2 x i64>, ptr @init_task
  %x = extractelement <2 x i64> %v, i32 0
  ret i64 %x
}
