"""The campaign layer: what a run measures and in which order, and its results folder.

matrix reads a campaign (file or command line) into steps; execute runs the
steps through the methods; runner ties a run together (test bed, results
folder, outcome tables); results writes and reads the records of a run.
Imports the method, trial and test bed layers; never the report.
"""
