import sys,time
from confluent_kafka.admin import AdminClient
a=AdminClient({"bootstrap.servers":sys.argv[1]})
f=a.delete_consumer_groups([sys.argv[2]])
for g,fu in f.items():
    try: fu.result(); print(time.strftime("%X"),"deleted",g)
    except Exception as e: print(time.strftime("%X"),"delete error",g,e)
