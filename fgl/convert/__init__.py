"""Other toolkits' files made fgl's (``fgl convert``): CRF++/Wapiti
templates as a spec, LINQS citation data as JSON-lines graphs."""
