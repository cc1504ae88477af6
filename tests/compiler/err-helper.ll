; PASS: llview
; ERROR: is not a km_ entry point
; Kernel reads outside a metric entry point would lose their read errors.
@jiffies_64 = external global i64

define internal i64 @helper() {
  %v = load i64, ptr @jiffies_64
  ret i64 %v
}

define i64 @km_x() {
  %v = call i64 @helper()
  ret i64 %v
}
