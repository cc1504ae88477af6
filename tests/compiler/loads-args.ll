; PASS: llview
; Argument classes come from the call sites: an internal helper called with
; a kernel pointer reads kernel memory; the same helper shape called with a
; local pointer does not.
@nr_threads = external global i32

define internal i32 @km_read_int(ptr %p) {
  %v = load i32, ptr %p
  ret i32 %v
}

define internal i32 @sum_local(ptr %p) {
  %v = load i32, ptr %p
  ret i32 %v
}

define i32 @km_entry() {
  %a = alloca i32
  store i32 1, ptr %a
  %x = call i32 @km_read_int(ptr @nr_threads)
  %y = call i32 @sum_local(ptr %a)
  %s = add i32 %x, %y
  ret i32 %s
}
; CHECK-LABEL: define internal i32 @km_read_int
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 4
; CHECK-LABEL: define internal i32 @sum_local
; CHECK-NOT: __llview_load
; CHECK: load i32, ptr %p
