"""Distributed training as a benchmark: DDP and FSDP2 on torch.distributed's launcher, gloo on CPUs, NCCL on GPUs.

`options` (what a run is), `worker` (inside each rank), `timing` (communication time), `launch` (elastic_launch),
`document` (the protocol 1.3 document), `cli` (`benchreg run distributed-training` and `benchreg run scaling`).
Importing this package imports no torch: the CLI's parser is built without it.
"""
