"""The InfiniteScienceGym task for Inspect AI: ``inspect eval sgfs/infinite_science -T seeds=1-20 --model ...``.

Shipped through the ``inspect_ai`` entry point (``sgfs._registry``); needs the ``inspect`` extra. ``results``
turns an Inspect log into the per-question records of ``sgfs eval`` so that ``sgfs report`` reads both.
"""
