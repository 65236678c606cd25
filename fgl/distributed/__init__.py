"""Training on a Dask cluster (``pip install 'fgl[dask]'``).

``CRF(spec, dask="tcp://host:8786").fit_file("data/part-*.txt")`` — or
``dask_workers=N`` for N worker processes on this machine, or ``fgl train
SPEC --train 'data/part-*.txt' --dask ADDRESS`` — compiles on the workers
(``compile``: each reads and encodes its own shards, found by ``shards``),
then runs L-BFGS on the driver with one round trip per evaluation
(``objective``).  ``search`` trains several models at once; ``cost``
estimates what one evaluation moves against what it computes.
Dask is imported only when a distributed run starts.
"""
