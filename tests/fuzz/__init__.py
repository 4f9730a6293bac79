"""`python -m tests.fuzz`: issue 26's systematic testers, run longer by hand (see __main__)."""
