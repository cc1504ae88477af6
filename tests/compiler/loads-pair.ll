; PASS: llview
; Two adjacent words in one 16-byte load (km_pair): <2 x i64> from kernel
; memory becomes __llview_load16, one request where the runtime can.
@init_task = external global [4096 x i8]

define double @km_pair(i64 %addr) {
  %p = inttoptr i64 %addr to ptr
  %v = load volatile <2 x i64>, ptr %p, align 16
  %a = extractelement <2 x i64> %v, i32 0
  %b = extractelement <2 x i64> %v, i32 1
  %s = add i64 %a, %b
  %r = uitofp i64 %s to double
  ret double %r
}
; CHECK-LABEL: define double @km_pair
; CHECK: %llview.err = alloca i32
; CHECK: %[[V:llview.raw[0-9]*]] = call <2 x i64> @__llview_load16(i64 %{{.*}}, ptr %llview.err)
; CHECK: extractelement <2 x i64> %[[V]], i32 0
; CHECK-NOT: load <2 x i64>
