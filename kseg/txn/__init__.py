"""`kseg txn`: open and hanging transactions, offline (kseg.txn.run)."""
