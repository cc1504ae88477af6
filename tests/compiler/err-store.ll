; PASS: llview
; ERROR: a write to kernel memory
; The detector never writes to the kernel it watches.
@jiffies_64 = external global i64

define void @km_write() {
  store i64 0, ptr @jiffies_64
  ret void
}
