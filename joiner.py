import time, sys
from confluent_kafka import Consumer
t0=time.time()
def ts(): return "%6.2f"%(time.time()-t0)
c=Consumer({"bootstrap.servers":sys.argv[1],"group.id":sys.argv[2],"auto.offset.reset":"earliest","session.timeout.ms":6000,"debug":"cgrp","log_level":7,
  "logger":None} if False else {"bootstrap.servers":sys.argv[1],"group.id":sys.argv[2],"auto.offset.reset":"earliest","session.timeout.ms":6000,"heartbeat.interval.ms":1000})
c.subscribe(["dt"],on_assign=lambda c,p: print(ts(),"assigned",[x.partition for x in p],flush=True),on_revoke=lambda c,p: print(ts(),"revoked",flush=True))
n=0; end=time.time()+float(sys.argv[3])
while time.time()<end:
    m=c.poll(0.5)
    if m and m.error(): print(ts(),"error",m.error(),flush=True)
    elif m: n+=1
print(ts(),"consumed",n,flush=True); c.close()
