; PASS: llview
; Provably local loads are left alone: an alloca, a global this module
; defines, an entry point's argument (the engine's memory).
@table = global [4 x i64] zeroinitializer

define i64 @km_local(ptr %world) {
  %a = alloca i64
  store i64 7, ptr %a
  %x = load i64, ptr %a
  %p = getelementptr [4 x i64], ptr @table, i64 0, i64 2
  %y = load i64, ptr %p
  %z = load i64, ptr %world
  %s = add i64 %x, %y
  %t = add i64 %s, %z
  ret i64 %t
}
; CHECK-LABEL: define i64 @km_local
; CHECK-NOT: __llview_load
; CHECK: load i64, ptr %a
; CHECK: load i64, ptr %p
; CHECK: load i64, ptr %world
