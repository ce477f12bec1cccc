"""Fine-tuning workloads: the memory and time model, known architectures, ranking and quotes."""
