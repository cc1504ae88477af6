; PASS: llview
; Loads of kernel memory become translated loads, each size as it is:
; through an undefined global (a kernel symbol), through an address made
; from an integer, and through a pointer read out of kernel memory.
@jiffies_64 = external global i64
@init_task = external global [4096 x i8]

define double @km_kernel(i64 %addr) {
  %j = load i64, ptr @jiffies_64
  %p = inttoptr i64 %addr to ptr
  %w = load i32, ptr %p
  %b = getelementptr i8, ptr %p, i64 3
  %c = load i8, ptr %b
  %n = getelementptr i8, ptr @init_task, i64 16
  %next = load ptr, ptr %n
  %h = load i16, ptr %next
  %f = load float, ptr %next
  %d = load volatile double, ptr %next
  %r = uitofp i64 %j to double
  ret double %r
}
; CHECK-LABEL: define double @km_kernel
; CHECK: %llview.err = alloca i32
; CHECK: call i64 @__llview_load(i64 ptrtoint (ptr @jiffies_64 to i64), i32 8, ptr %llview.err)
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 4, ptr %llview.err)
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 1, ptr %llview.err)
; CHECK: %[[NEXT:llview.raw[0-9]*]] = call i64 @__llview_load(i64 %{{.*}}, i32 8, ptr %llview.err)
; CHECK: inttoptr i64 %[[NEXT]] to ptr
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 2, ptr %llview.err)
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 4, ptr %llview.err)
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 8, ptr %llview.err)
; A metric that could not read returns NaN:
; CHECK: %llview.e = load i32, ptr %llview.err
; CHECK: select i1 %{{.*}}, double 0x7FF8000000000000, double %r
; CHECK-NOT: load i64, ptr @jiffies_64
