; PASS: llview
; A pointer stored into local memory and loaded back keeps its class: a
; kernel pointer parked in an alloca is still a kernel pointer.
@init_task = external global [4096 x i8]

define i64 @km_parked() {
  %slot = alloca ptr
  %k = getelementptr i8, ptr @init_task, i64 8
  store ptr %k, ptr %slot
  %p = load ptr, ptr %slot
  %v = load i64, ptr %p
  ret i64 %v
}
; CHECK-LABEL: define i64 @km_parked
; CHECK: %p = load ptr, ptr %slot
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 8, ptr %llview.err)
