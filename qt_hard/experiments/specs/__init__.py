"""The tables of the docs, one module each: ``qt_table`` (HCL Table 2 and the readings of the hard
weights), ``k_vs_n`` (Ash et al.'s k-versus-N ablation), ``graph_table`` (the graph tables of HCL,
H-SCL and OT) and ``vision_table`` (SimCLR / MoCo-v2 with each strategy)."""
