#!/usr/bin/env python3
"""Prints its arguments as one line on MPI rank 0 only (the others print nothing): a stand-in example for
testing run_ranks.py itself, e.g. that a result line "loss nan" fails the comparison."""
import os
import sys

rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
if rank == "0":
    print(" ".join(sys.argv[1:]))
