; PASS: llview
; A list walk: the cursor is a phi of a kernel address and of pointers
; read from kernel memory; every load through it is translated.  The
; output buffer is an argument the engine passes: local.
@init_task = external global [4096 x i8]

define i32 @km_walk(ptr %out) {
entry:
  %head = getelementptr i8, ptr @init_task, i64 1000
  br label %loop
loop:
  %cur = phi ptr [ %head, %entry ], [ %next, %body ]
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %next = load ptr, ptr %cur
  %done = icmp eq ptr %next, %head
  br i1 %done, label %exit, label %body
body:
  %slot = getelementptr i64, ptr %out, i64 %i
  %v = ptrtoint ptr %next to i64
  store i64 %v, ptr %slot
  %i1 = add i64 %i, 1
  br label %loop
exit:
  %n = trunc i64 %i to i32
  ret i32 %n
}
; CHECK-LABEL: define i32 @km_walk
; CHECK: loop:
; CHECK: call i64 @__llview_load(i64 %{{.*}}, i32 8, ptr %llview.err)
; CHECK: store i64 %v, ptr %slot
; An i32 entry point returns the read error itself:
; CHECK: %llview.e = load i32, ptr %llview.err
; CHECK: select i1 %{{.*}}, i32 %llview.e, i32 %n
