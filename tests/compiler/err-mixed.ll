; PASS: llview
; ERROR: may read kernel memory or the detector's own
; A pointer that is kernel on one path and local on another cannot be
; read safely either way: refused, with where.
@init_task = external global [4096 x i8]

define i64 @km_mixed(i1 %c) {
  %a = alloca i64
  %k = getelementptr i8, ptr @init_task, i64 8
  %p = select i1 %c, ptr %a, ptr %k
  %v = load i64, ptr %p
  ret i64 %v
}
