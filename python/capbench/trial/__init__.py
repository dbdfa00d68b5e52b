"""The trial layer: one constant load through the test bed, and where every packet went.

measure runs a trial (generator, counter, the counters of every layer) and
returns its record; accounting and loss_layers say which layer lost each frame.
Imports the test bed layer and the shared top-level modules.
"""
