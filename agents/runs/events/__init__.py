"""A run's event stream: the store (seq, persist, publish; group commit), its SQL, and the fan-out."""
