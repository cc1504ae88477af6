; PASS: llview
; memcpy from kernel memory becomes a translated copy; __llview_failed()
; reads the function's error flag.
@init_task = external global [4096 x i8]
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare i32 @__llview_failed()

define i32 @km_comm(ptr %out) {
  %src = getelementptr i8, ptr @init_task, i64 2000
  call void @llvm.memcpy.p0.p0.i64(ptr %out, ptr %src, i64 16, i1 false)
  %f = call i32 @__llview_failed()
  ret i32 %f
}
; CHECK-LABEL: define i32 @km_comm
; CHECK: call void @__llview_copy(ptr %out, i64 %{{.*}}, i64 16, ptr %llview.err)
; CHECK-NOT: llvm.memcpy
; CHECK: %llview.failed = zext i1 %{{.*}} to i32
