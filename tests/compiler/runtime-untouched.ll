; PASS: llview
; The translation runtime's own loads (kx_*, __llview_*) go through the
; mapping of the target's RAM: LLView never rewrites them.
define i64 @kx_load64(i64 %ptr) {
  %p = inttoptr i64 %ptr to ptr
  %v = load volatile i64, ptr %p
  ret i64 %v
}
; CHECK-LABEL: define i64 @kx_load64
; CHECK: load volatile i64, ptr %p
; CHECK-NOT: call i64 @__llview_load
